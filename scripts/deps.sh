#!/usr/bin/env bash
# Installs the Debian 12 packages Ember needs. Idempotent: does nothing when all are present.
# Usage: scripts/deps.sh [engine] [app] [test]   (default: all)
set -euo pipefail

engine=(build-essential cmake ninja-build pkg-config git libpcre2-dev libicu-dev nlohmann-json3-dev
        libvulkan-dev libvulkan-volk-dev glslang-tools spirv-tools libcpp-httplib-dev libssl-dev)
app=(qt6-base-dev qt6-declarative-dev qml6-module-qtquick qml6-module-qtquick-controls
     qml6-module-qtquick-layouts qml6-module-qtquick-window qml6-module-qtquick-dialogs
     qml6-module-qtqml-workerscript qml6-module-qtquick-templates qml6-module-qt-labs-settings
     qml6-module-qtqml-models qml6-module-qtquick-shapes
     qml6-module-qt-labs-folderlistmodel libqt6sql6-sqlite libqt6svg6 qt6-svg-dev libgl-dev
     libmd4c-dev)
test=(libgtest-dev libgmock-dev mesa-vulkan-drivers vulkan-validationlayers vulkan-tools
      xvfb xauth qml6-module-qttest qt6-declarative-dev-tools qml6-module-qtqml python3 clang
      libclang-rt-14-dev desktop-file-utils appstream dpkg-dev sqlite3 bc clang-format)
# The server's tests drive it with the openai npm package. A node and npm already installed
# (NodeSource's nodejs carries its own npm, which Debian's npm conflicts with) are kept.
node=(nodejs npm)

groups=("$@")
[ ${#groups[@]} -eq 0 ] && groups=(engine app test)
want=()
for g in "${groups[@]}"; do
    case "$g" in
        engine) want+=("${engine[@]}") ;;
        app) want+=("${app[@]}") ;;
        test) want+=("${test[@]}")
              command -v node >/dev/null && command -v npm >/dev/null || want+=("${node[@]}") ;;
        *) echo "deps.sh: unknown group '$g' (expected engine, app or test)" >&2; exit 2 ;;
    esac
done

missing=()
for p in "${want[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
echo "deps.sh: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
