# Sourced by the GPU scripts: cuBLAS is loaded at run time, so put the system's libcublas (if
# it has one) on the loader path.
cublas=$(find / -name 'libcublas.so.1[0-9]*' -not -path '/proc/*' 2>/dev/null | head -1)
[ -n "$cublas" ] && export LD_LIBRARY_PATH="$(dirname "$cublas")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
