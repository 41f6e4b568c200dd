"""The Streamlit entry point (``hcep dashboard`` runs ``streamlit run`` on this file).

Why a folder of its own: Streamlit puts the script's folder first on ``sys.path``; holding only this file and
``views/``, it cannot shadow a package (``dashboards/app.py`` would hide the top-level ``app``).

Sources come from the environment (:mod:`dashboards.config`); the views are the files under ``views/`` (not
``pages/``: that name turns on Streamlit's older multipage mode beside ``st.navigation``).
"""

from __future__ import annotations

import streamlit as st

from dashboards import ui

st.set_page_config(page_title="hcep ops", page_icon=":material/monitoring:", layout="wide")
navigation = st.navigation(
    [
        st.Page(path, title=title, url_path=url, icon=icon, default=(url == "overview"))
        for path, title, url, icon in ui.PAGES
    ]
)
ui.sidebar(ui.data_source())
navigation.run()
