"""Streamlit-side helpers shared by the pages (the only package besides app_pages/ that imports streamlit), and
``ui.browser``, which starts the app and drives it from outside for the browser tests and the measuring scripts."""
