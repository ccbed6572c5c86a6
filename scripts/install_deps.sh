#!/usr/bin/env bash
# System and Python packages ember builds and tests with. Quiet and quick when all are present.
set -euo pipefail
need_apt=()
# clang and its runtime libraries build the libFuzzer targets (tests/fuzz: -DEMBER_BUILD_FUZZERS=ON).
# libprotobuf-dev and protobuf-compiler: the GraphDef messages (proto/ember/*.proto, CMake runs protoc).
# libleveldb-dev: the table format of a checkpoint's index (src/ember/state/tensor_bundle.cc).
# liblapack-dev: LAPACK and BLAS for tf.linalg (src/ember/ops/linalg_lapack.cc); libopenblas-dev then becomes
# the liblapack.so.3 and libblas.so.3 that Debian's alternatives pick, 10x faster at 256x256 (docs/linalg.md).
# libre2-dev: RE2, the regular expressions of tf.strings (src/ember/ops/strings.cc).
# libfftw3-dev: FFTW, the FFTs of tf.signal (src/ember/kernels/fft.cc).
# libjpeg62-turbo-dev, libpng-dev, libgif-dev: the image file codecs of tf.io.decode_jpeg/png/gif
# (src/ember/kernels/image_codecs.h).
# llvm-15-dev: the ORC JIT that compiles fused element-wise groups to native code (docs/fusion.md).
# libboost-dev: Boost.Math's special functions (incomplete gamma and beta, Bessel, Ei; headers only, included by
# src/ember/ops/special_functions.cc alone).
# libgloo-dev: collectives across worker processes (src/ember/distribute, docs/distribute.md section 8);
# libopenmpi-dev and openmpi-bin: MPI, measured against Gloo (bench/native/allreduce_mpi.cc) and mpirun.
for pkg in g++ cmake ninja-build libdnnl-dev libgtest-dev ccache clang libclang-rt-14-dev libomp-14-dev \
    libprotobuf-dev protobuf-compiler libleveldb-dev liblapack-dev libopenblas-dev llvm-15-dev libre2-dev \
    libgloo-dev libopenmpi-dev openmpi-bin libfftw3-dev libboost-dev libjpeg62-turbo-dev libpng-dev \
    libgif-dev; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need_apt+=("$pkg")
done
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "== apt-get install ${need_apt[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi
need_pip=()
python3 -c "import numpy" 2>/dev/null || need_pip+=(numpy)
python3 -c "import nanobind" 2>/dev/null || need_pip+=(nanobind)
python3 -c "import scikit_build_core" 2>/dev/null || need_pip+=(scikit-build-core)
python3 -c "import pytest" 2>/dev/null || need_pip+=(pytest)
python3 -c "import ml_dtypes" 2>/dev/null || need_pip+=(ml_dtypes)
# The Python side of the GraphDef messages (ember.framework.graph_def builds its classes at import).
python3 -c "import google.protobuf" 2>/dev/null || need_pip+=(protobuf)
python3 -c "import sklearn" 2>/dev/null || need_pip+=(scikit-learn)  # tests/python/test_train_digits.py
python3 -c "import h5py" 2>/dev/null || need_pip+=(h5py)  # Keras .h5 files (python/ember/keras/hdf5_format.py)
# `--test`: what the test command adds. TensorFlow is the reference the differential tests compare with
# (tf_keras: Keras 2 semantics, where layers are Modules); pip's cache keeps later installs quick.
if [ "${1:-}" = "--test" ]; then
  python3 -c "import tensorflow" 2>/dev/null || need_pip+=(tensorflow-cpu)
  python3 -c "import tf_keras" 2>/dev/null || need_pip+=(tf_keras)
  # The summary tests read ember's event files back with TensorBoard's own reader.
  python3 -c "import tensorboard" 2>/dev/null || need_pip+=(tensorboard)
  # ImageDataGenerator.flow_from_dataframe takes a pandas DataFrame, in ember as in tf_keras.
  python3 -c "import pandas" 2>/dev/null || need_pip+=(pandas)
fi
if [ ${#need_pip[@]} -gt 0 ]; then
  echo "== pip install ${need_pip[*]}"
  python3 -m pip install -q "${need_pip[@]}"
fi
