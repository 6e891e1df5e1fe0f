# Sourced on the device machine: Vulkan loader from .gl, Ember's carried libraries.
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
export LD_LIBRARY_PATH="$PWD/.devbuild/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if ! ls /usr/share/vulkan/icd.d/*nvidia* /etc/vulkan/icd.d/*nvidia* >/dev/null 2>&1; then
    export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
fi
export EMBER_SHARED_DIR="$PWD/.devbuild/shared"
export XDG_CACHE_HOME=/tmp/ember-cache
CLI="$PWD/.devbuild/bin/ember-cli"
