# The hosted demo's container (e.g. a Hugging Face Docker Space, app_port 8501). CPU-only torch keeps the image small.
# Pinned: the base image to one Python release on one Debian release, every package to requirements.lock.
FROM python:3.11.7-slim-bookworm

ENV PIP_NO_CACHE_DIR=1 \
    PYTHONUNBUFFERED=1 \
    LINEAGE_DEVICE=cpu \
    LINEAGE_THREADS=1 \
    LINEAGE_HEAVY_RUNS=2

# g++: the chunked form's steps compile when the server starts (serve.py) into the user's cache, and run 2-3x faster
# than their Python form (lineage/ops/native.py); without a compiler the Python form runs
RUN apt-get update && apt-get install -y --no-install-recommends g++ && rm -rf /var/lib/apt/lists/*

# uid 1000: the user a Docker Space runs the container as
RUN useradd --create-home --uid 1000 lineage
WORKDIR /app
COPY requirements.txt requirements.lock ./
RUN pip install --index-url https://download.pytorch.org/whl/cpu "torch==2.13.0" \
    && pip install -r requirements.txt -c requirements.lock

COPY --chown=lineage:lineage . .
USER lineage

EXPOSE 8501
# serve.py imports torch & co. before the server answers: give it a minute on a small CPU before counting failures
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8501/_stcore/health', timeout=4)"
CMD ["python", "serve.py", "--server.port=8501", "--server.address=0.0.0.0"]
