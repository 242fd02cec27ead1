"""The dashboard's pages, one per file; Streamlit runs each as a script (see ``ui/app.py``)."""
