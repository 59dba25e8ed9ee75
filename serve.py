"""Start the app: ``python serve.py [streamlit options]`` — the README's start and the container's.

It runs ``streamlit run app.py`` with the same options, after two things:

1. A port given with ``--server.port`` (or ``STREAMLIT_SERVER_PORT``) that is taken is refused at once, before any
   heavy import.
2. torch, numpy, pandas, plotly and the app's own modules are imported, and Streamlit's once-per-process first-run
   costs paid, before the server answers its health check (``ui.serving``): the first visitor does not wait for them.
   What was imported is then frozen out of the garbage collector's walks (``ui.serving.freeze_preloaded``).

``streamlit run app.py`` starts the same app; its first visitor waits for those imports.
"""

import sys
from importlib.metadata import entry_points

from ui.serving import freeze_preloaded, import_heavy_modules, port_problem, requested_port, warm_first_run

if __name__ == "__main__":
    args = sys.argv[1:]
    port = requested_port(args)
    problem = port_problem(*port) if port else None
    if problem:
        sys.exit(f"serve.py: {problem}")
    import_heavy_modules()
    warm_first_run()
    freeze_preloaded()

    # The `streamlit` command itself, found through the console script Streamlit's package declares, in this process
    (streamlit_command,) = entry_points(group="console_scripts", name="streamlit")
    sys.argv = ["streamlit", "run", "app.py", *args]
    sys.exit(streamlit_command.load()())
