"""Stage page placeholder (being built)."""

import streamlit as st

from ui.common import stage_header

stage_header("gpt2")
