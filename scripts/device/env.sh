# Sourced on the device machine: Vulkan loader from .gl, Ember's carried libraries.
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
export LD_LIBRARY_PATH="$PWD/.devbuild/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# The machine's NVIDIA ICD json names libGLX_nvidia, which fails to create an instance there
# (no display); the same driver's libEGL_nvidia entry point works.
printf '{"file_format_version":"1.0.1","ICD":{"library_path":"libEGL_nvidia.so.0","api_version":"1.3.0"}}' \
    >/tmp/nv_egl_icd.json
export VK_DRIVER_FILES=/tmp/nv_egl_icd.json
export EMBER_SHARED_DIR="$PWD/.devbuild/shared"
export XDG_CACHE_HOME=/tmp/ember-cache
CLI="$PWD/.devbuild/bin/ember-cli"
