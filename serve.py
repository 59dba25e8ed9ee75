"""Start the app with its heavy imports done before the server answers: ``python serve.py [streamlit options]``.

The first visitor of a fresh `streamlit run app.py` waits for torch, pandas and plotly to import (about 2.5 s on a
small CPU). Importing them here, before the server starts, moves that wait out of the first page view. So do the
other once-per-process costs of a first script run, and the page shell served here starts loading plotly.js with the
frontend instead of after the first chart arrives (``ui.serving``). The hosted demo's container starts this way.
"""

import sys

import numpy  # noqa: F401
import pandas  # noqa: F401
import plotly.graph_objects  # noqa: F401
import torch  # noqa: F401
import torch.fx.experimental.symbolic_shapes  # noqa: F401  (Module.to_empty, on the softmax pages, pulls in sympy: 0.5 s)
from streamlit import file_util
from streamlit.web import cli

import lineage.demo  # noqa: F401
import lineage.plots  # noqa: F401
import ui.classroom  # noqa: F401
import ui.common  # noqa: F401
from ui.serving import static_dir_for_serving, warm_first_run

if __name__ == "__main__":
    warm_first_run()
    static_dir = static_dir_for_serving()
    if static_dir is None:
        print("serve.py: this Streamlit's static files are not laid out as expected; plotly.js loads on demand")
    else:  # once, before the server starts: the server reads it when it builds its static route
        file_util.get_static_dir = lambda: str(static_dir)
    sys.argv = ["streamlit", "run", "app.py", *sys.argv[1:]]
    sys.exit(cli.main())
