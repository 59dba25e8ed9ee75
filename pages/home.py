"""Home (placeholder until the home page lands)."""

import streamlit as st

st.title("Attention Lineage")
st.write("From GPT-2 to Kimi: how language models store, update, forget and retrieve memory.")
