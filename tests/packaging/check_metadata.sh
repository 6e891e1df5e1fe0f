#!/usr/bin/env bash
# check_metadata.sh SOURCE_DIR APP_ID VERSION: the icon exists at every installed size, and the
# desktop entry, AppStream file and project version agree with each other.
set -euo pipefail
src="$1" id="$2" version="$3"
fail=0
err() { echo "FAIL: $*" >&2; fail=1; }

icons="$src/resources/icons/hicolor"
[ -s "$icons/scalable/apps/$id.svg" ] || err "missing $icons/scalable/apps/$id.svg"
for size in 16 32 48 64 128 256; do
    png="$icons/${size}x${size}/apps/$id.png"
    if [ ! -s "$png" ]; then
        err "missing $png (run packaging/render-icons.sh)"
        continue
    fi
    # PNG: 8-byte signature, then the IHDR chunk whose data starts with big-endian width, height.
    sig=$(od -An -tx1 -N8 "$png" | tr -d ' \n')
    [ "$sig" = 89504e470d0a1a0a ] || err "$png is not a PNG"
    read -r w h < <(od -An -tu1 -j16 -N8 "$png" |
        awk '{print $1*16777216+$2*65536+$3*256+$4, $5*16777216+$6*65536+$7*256+$8}')
    [ "$w" = "$size" ] && [ "$h" = "$size" ] || err "$png is ${w}x${h}, expected ${size}x${size}"
done

desktop="$src/packaging/$id.desktop"
metainfo="$src/packaging/$id.metainfo.xml"
grep -qx "Icon=$id" "$desktop" || err "$desktop: Icon= is not $id"
grep -qx "Exec=ember" "$desktop" || err "$desktop: Exec= is not the installed ember"
grep -q "<id>$id</id>" "$metainfo" || err "$metainfo: <id> is not $id"
grep -q "<launchable type=\"desktop-id\">$id.desktop</launchable>" "$metainfo" ||
    err "$metainfo: launchable is not $id.desktop"
newest=$(grep -o '<release version="[^"]*"' "$metainfo" | head -1 | cut -d'"' -f2)
[ "$newest" = "$version" ] ||
    err "$metainfo: newest release is '$newest' but the project version is $version"
[ $fail -eq 0 ] && echo "metadata OK"
exit $fail
