#!/usr/bin/env bash
# Prepares, once, what scripts/vm/guest.sh boots: the uncompressed kernel (vmlinux, taken
# out of /boot/vmlinuz-VERSION; QEMU boots it directly through its PVH entry, ~3 s faster
# than the compressed one) and a small busybox initramfs holding the 9p/virtio modules of
# that kernel and scripts/vm/init. Both are cached under
#   ${TOPOPROBE_VM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/topoprobe-vm}/VERSION/
# and rebuilt when the kernel, busybox or scripts/vm/init change.
#
#   scripts/vm/initramfs.sh [--kernel-version VERSION]
#
# Prints two lines: the vmlinux path and the initramfs path. The newest kernel under /boot
# is used unless TOPOPROBE_VM_KERNEL (a version such as 6.1.0-56-amd64) or
# --kernel-version names one. Exit status: 0 done, 77 cannot be done here (no kernel under
# /boot, no modules for it, no busybox, no cpio; the reason is on standard error), 2 usage.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

version=${TOPOPROBE_VM_KERNEL:-}
while [ $# -gt 0 ]; do
    case "$1" in
        --kernel-version) version=${2:?--kernel-version needs a value}; shift 2 ;;
        -h|--help) sed -n '2,16p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "initramfs.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done

cannot() { echo "initramfs.sh: cannot prepare a guest here: $*" >&2; exit 77; }

if [ -z "$version" ]; then
    # The newest /boot/vmlinuz-* whose modules are installed.
    version=$(find /boot -maxdepth 1 -name 'vmlinuz-*' -printf '%f\n' 2>/dev/null \
        | sed 's/^vmlinuz-//' | sort -V | while read -r v; do
            [ -f "/lib/modules/$v/modules.dep" ] && echo "$v"
        done | tail -1)
    [ -n "$version" ] || cannot "no /boot/vmlinuz-* with modules under /lib/modules (install linux-image-amd64)"
fi
vmlinuz=/boot/vmlinuz-$version
moddir=/lib/modules/$version
[ -r "$vmlinuz" ] || cannot "$vmlinuz is missing or unreadable (install linux-image-amd64)"
[ -f "$moddir/modules.dep" ] || cannot "$moddir/modules.dep is missing (the kernel's modules are not installed)"
busybox=$(command -v busybox || true)
[ -n "$busybox" ] || cannot "busybox is missing (install busybox-static)"
if ! file_out=$(LC_ALL=C od -An -c -N 4 "$busybox" 2>/dev/null) || [[ "$file_out" != *E*L*F* ]]; then
    cannot "$busybox is not an ELF binary"
fi
if ldd "$busybox" >/dev/null 2>&1; then
    cannot "$busybox is dynamically linked (install busybox-static)"
fi
command -v cpio >/dev/null || cannot "cpio is missing"

cache_root=${TOPOPROBE_VM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/topoprobe-vm}
cache=$cache_root/$version
mkdir -p "$cache"

# --- vmlinux: the kernel's own extract-vmlinux method: find each compressor's magic in the
# bzImage, decompress from there, keep the first result that is an ELF file.
is_elf() { [ "$(head -c 4 "$1" 2>/dev/null | od -An -tx1 | tr -d ' \n')" = "7f454c46" ]; }
extract() {
    local magic=$1 name=$2 tmp=$3; shift 3
    local pos
    for pos in $(LC_ALL=C tr "$magic\n$name" "\n$name=" < "$vmlinuz" | LC_ALL=C grep -abo "^$name" | cut -d: -f1); do
        pos=${pos%%:*}
        tail -c+"$pos" "$vmlinuz" | "$@" > "$tmp" 2>/dev/null || true
        if is_elf "$tmp"; then return 0; fi
    done
    return 1
}
vmlinux=$cache/vmlinux
if [ ! -s "$vmlinux" ] || [ "$vmlinux" -ot "$vmlinuz" ]; then
    tmp=$(mktemp "$cache/vmlinux.XXXXXX")
    trap 'rm -f "$tmp"' EXIT
    if extract '\037\213\010' xy "$tmp" gunzip \
        || extract '\3757zXZ\000' abcde "$tmp" unxz \
        || extract 'BZh' xy "$tmp" bunzip2 \
        || extract '\135\0\0\0' xxx "$tmp" unlzma \
        || extract '\211\114\132' xy "$tmp" lzop -d \
        || extract '\002!L\030' xxx "$tmp" lz4 -d \
        || extract '(\265/\375' xxx "$tmp" unzstd; then
        mv "$tmp" "$vmlinux"
    else
        cannot "no compressed ELF kernel found inside $vmlinuz"
    fi
    trap - EXIT
fi

# --- initramfs: busybox, the modules 9p over virtio-pci needs (with their dependencies, in
# load order) and the init script.
wanted=(virtio_pci 9pnet_virtio 9p)
key=$( { cat "$here/init"; sha256sum "$busybox"; echo "$version ${wanted[*]}"; } | sha256sum | cut -c1-16)
initramfs=$cache/initramfs-$key.cpio
if [ ! -s "$initramfs" ]; then
    root=$(mktemp -d "$cache/root.XXXXXX")
    trap 'rm -rf "$root"' EXIT
    mkdir -p "$root"/{bin,dev,proc,sys,mnt/host,mnt/out,lib/modules}
    cp "$busybox" "$root/bin/busybox"
    for applet in $("$busybox" --list); do
        [ "$applet" = busybox ] || ln -sf busybox "$root/bin/$applet"
    done
    # modules.dep lines: "kernel/a.ko: kernel/b.ko kernel/c.ko" (dependencies of a, the
    # deepest last); a module is loaded after all of its dependencies.
    order=()
    add() {
        local mod=$1 line dep deps
        line=$(grep -E "(^|/)$mod\.ko(\.xz|\.zst|\.gz)?:" "$moddir/modules.dep" | head -1) \
            || cannot "module $mod is not in $moddir/modules.dep"
        deps=${line#*:}
        local rev=()
        for dep in $deps; do rev=("$dep" "${rev[@]}"); done
        for dep in "${rev[@]}"; do add "$(basename "${dep%%.ko*}")"; done
        local path=${line%%:*}
        local have
        for have in "${order[@]}"; do [ "$have" = "$path" ] && return 0; done
        order+=("$path")
    }
    for mod in "${wanted[@]}"; do add "$mod"; done
    : > "$root/lib/modules/load-order"
    for path in "${order[@]}"; do
        name=$(basename "${path%%.ko*}").ko
        case "$path" in
            *.ko.xz) xz -dc "$moddir/$path" > "$root/lib/modules/$name" ;;
            *.ko.zst) zstd -qdc "$moddir/$path" > "$root/lib/modules/$name" ;;
            *.ko.gz) gzip -dc "$moddir/$path" > "$root/lib/modules/$name" ;;
            *) cp "$moddir/$path" "$root/lib/modules/$name" ;;
        esac
        echo "$name" >> "$root/lib/modules/load-order"
    done
    cp "$here/init" "$root/init"
    chmod 755 "$root/init"
    tmp=$(mktemp "$cache/initramfs.XXXXXX")
    (cd "$root" && find . -print0 | cpio --null -o -H newc --quiet) > "$tmp"
    mv "$tmp" "$initramfs"
    rm -rf "$root"
    trap - EXIT
    # Older initramfs images of this kernel are left from earlier init scripts.
    find "$cache" -maxdepth 1 -name 'initramfs-*.cpio' ! -name "${initramfs##*/}" -delete
fi
echo "$vmlinux"
echo "$initramfs"
