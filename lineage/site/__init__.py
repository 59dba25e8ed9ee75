"""The lecture as a static site: ``python -m lineage site --out site/``.

A build step above the plots and the teaching text (it imports :mod:`lineage.plots` and :mod:`lineage.teach`, never
streamlit or ``ui``): :mod:`lineage.site.screens` gathers what each page of the tour carries on the default story,
from the functions the app's pages call; :mod:`lineage.site.build` writes it as HTML (Jinja2, autoescaped), the
figures as JSON in each page with their animation frames, one shared ``plotly.min.js`` from the installed plotly
package, and a little hand-written JavaScript (``static/site.js``) for Play, J / K, Shift+N / Shift+P, the presenter
view and the step in the URL hash.
"""
