#!/usr/bin/env bash
# What `foliosim vm` needs besides Rust: QEMU for both architectures,
# mkfs.ext4 for the guest's work disk, and the Rust targets of the static
# foliosim put into a guest. Installs what is missing (Debian/Ubuntu, as
# root for the packages); says what to do otherwise.
set -euo pipefail
missing=()
command -v qemu-system-x86_64 >/dev/null || missing+=(qemu-system-x86)
command -v qemu-system-aarch64 >/dev/null || missing+=(qemu-system-arm)
command -v mkfs.ext4 >/dev/null || [ -x /sbin/mkfs.ext4 ] || missing+=(e2fsprogs)
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        apt-get install -y -q "${missing[@]}" >/dev/null
    else
        echo "setup-vm: install ${missing[*]} for foliosim vm" >&2
    fi
fi
for t in x86_64-unknown-linux-musl aarch64-unknown-linux-musl; do
    rustup target list --installed | grep -qx "$t" || rustup target add "$t"
done
