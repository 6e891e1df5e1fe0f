#!/usr/bin/env bash
# build_deb.sh SOURCE_DIR BUILD_DIR WORK_DIR APP_ID APP_BUILT VULKAN_BUILT: builds the .deb with
# CPack from the (already built) build directory, unpacks it into WORK_DIR/root and checks its
# control fields and files.
set -euo pipefail
src="$1" build="$2" work="$3" id="$4" app="$5" vulkan="$6"
for tool in cpack dpkg-deb dpkg-shlibdeps readelf; do
    command -v "$tool" >/dev/null || { echo "$tool not found (scripts/deps.sh test)" >&2; exit 1; }
done
fail=0
err() { echo "FAIL: $*" >&2; fail=1; }

rm -rf "$work"
mkdir -p "$work"
# -B keeps CPack's staging and output out of the build directory's top level.
if ! (cd "$build" && cpack -G DEB -B "$work/out") >"$work/cpack.log" 2>&1; then
    cat "$work/cpack.log" >&2
    exit 1
fi
debs=("$work"/out/*.deb)
[ ${#debs[@]} -eq 1 ] && [ -f "${debs[0]}" ] || { echo "expected one .deb in $work/out" >&2; exit 1; }
deb="${debs[0]}"
dpkg-deb -x "$deb" "$work/root"
dpkg-deb -I "$deb" control
dpkg-deb -c "$deb"

depends=$(dpkg-deb -f "$deb" Depends)
recommends=$(dpkg-deb -f "$deb" Recommends)
has() { [[ ", $1," == *", $2"[\ ,]* ]]; }  # whole package name in a control field
# libc6 is never hand-listed: its presence shows that dpkg-shlibdeps ran.
has "$depends" libc6 || err "Depends lacks libc6: dpkg-shlibdeps did not run? ($depends)"
for p in mesa-vulkan-drivers libvulkan1; do
    has "$depends" "$p" && err "$p must not be a Depends (Ember runs on the CPU without it)"
    if [ "$vulkan" = 1 ]; then
        has "$recommends" "$p" || err "Recommends lacks $p ($recommends)"
    fi
done

[ -x "$work/root/usr/bin/ember-cli" ] || err "no usr/bin/ember-cli"
if [ "$app" = 1 ]; then
    for p in libqt6core6 libqt6quick6 qml6-module-qtquick-controls libqt6sql6-sqlite; do
        has "$depends" "$p" || err "Depends lacks $p"
    done
    [ -x "$work/root/usr/bin/ember" ] || err "no usr/bin/ember"
    for f in "share/applications/$id.desktop" "share/metainfo/$id.metainfo.xml" \
             "share/icons/hicolor/scalable/apps/$id.svg"; do
        [ -s "$work/root/usr/$f" ] || err "no usr/$f"
    done
    for size in 16 32 48 64 128 256; do
        f="share/icons/hicolor/${size}x${size}/apps/$id.png"
        [ -s "$work/root/usr/$f" ] || err "no usr/$f"
    done
fi

# Only run-time files, all under /usr: no headers, static libraries, CMake files or tests.
outside=$(cd "$work/root" && find . -mindepth 1 -maxdepth 1 ! -name usr)
[ -z "$outside" ] || err "files outside /usr: $outside"
extra=$(cd "$work/root/usr" && find . -type f ! -path './bin/*' ! -path './share/*')
[ -z "$extra" ] || err "unexpected files: $extra"
for exe in "$work"/root/usr/bin/*; do
    if readelf -d "$exe" | grep -Eq 'RPATH|RUNPATH'; then
        err "$exe keeps a run path: $(readelf -d "$exe" | grep -E 'RPATH|RUNPATH')"
    fi
    # Files are found from the binary's resources or XDG folders, never from the checkout.
    # (Source file names, as assert messages hold them, are harmless.)
    for dir in "$src" "$build"; do
        paths=$(grep -aoE "$dir/[^[:cntrl:]\"' ]*" "$exe" | grep -vE '\.(c|cc|cpp|h|hpp)$' || true)
        [ -z "$paths" ] || err "$exe holds paths into $dir: $(sort -u <<<"$paths" | head -5)"
    done
done
[ $fail -eq 0 ] && echo "deb OK: $deb"
exit $fail
