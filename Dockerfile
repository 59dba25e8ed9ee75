# A container for hosting the demo (e.g. a Docker Space on port 8501). CPU-only torch keeps the image small.
FROM python:3.11-slim

ENV PIP_NO_CACHE_DIR=1 \
    PYTHONUNBUFFERED=1 \
    LINEAGE_DEVICE=cpu \
    LINEAGE_THREADS=1

WORKDIR /app
COPY requirements.txt .
RUN pip install --index-url https://download.pytorch.org/whl/cpu "torch>=2.4,<2.14" \
    && pip install -r requirements.txt

COPY . .
RUN useradd --create-home lineage && chown -R lineage /app
USER lineage

EXPOSE 8501
HEALTHCHECK CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8501/_stcore/health')"
CMD ["python", "serve.py", "--server.port=8501", "--server.address=0.0.0.0"]
