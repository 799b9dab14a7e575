#!/usr/bin/env bash
# Installs the opencode binary for this runner from the project's GitHub release into
# $OPENCODE_INSTALL_DIR, its SHA-256 checked against the release's own `.sha256` file. A directory
# that already holds the binary (the action's cache) is used as it is. Puts it on the job's PATH.
#
#   OPENCODE_VERSION      a release tag (v0.1.0) or `latest`
#   OPENCODE_INSTALL_DIR  where the binary goes (cached by the action per version and runner)
#   OPENCODE_RELEASES     the releases URL (default: the project's on github.com)
set -euo pipefail

version="${OPENCODE_VERSION:?set OPENCODE_VERSION to a release tag or latest}"
dir="${OPENCODE_INSTALL_DIR:?set OPENCODE_INSTALL_DIR}"
releases="${OPENCODE_RELEASES:-https://github.com/opencode-rs/opencode-rs/releases}"

os="${RUNNER_OS:-$(uname -s)}"
arch="${RUNNER_ARCH:-$(uname -m)}"
case "$os-$arch" in
    Linux-X64 | Linux-x86_64) target=x86_64-unknown-linux-gnu ;;
    Linux-ARM64 | Linux-aarch64) target=aarch64-unknown-linux-gnu ;;
    macOS-X64 | Darwin-x86_64) target=x86_64-apple-darwin ;;
    macOS-ARM64 | Darwin-arm64) target=aarch64-apple-darwin ;;
    Windows-X64) target=x86_64-pc-windows-msvc ;;
    *)
        echo "::error::opencode has no release for $os on $arch (Linux, macOS and Windows on x64; Linux and macOS on ARM64)"
        exit 1
        ;;
esac
exe=opencode
archive="opencode-$target.tar.gz"
if [[ $target == *windows* ]]; then
    exe=opencode.exe
    archive="opencode-$target.zip"
fi

if [[ -x "$dir/$exe" ]]; then
    echo "opencode $version: from the cache"
else
    if [[ $version == latest ]]; then
        base="$releases/latest/download"
    else
        base="$releases/download/v${version#v}"
    fi
    work="$(mktemp -d)"
    trap 'rm -rf "$work"' EXIT
    echo "opencode $version: downloading $archive"
    curl --fail --silent --show-error --location --retry 3 --output "$work/$archive" "$base/$archive"
    curl --fail --silent --show-error --location --retry 3 --output "$work/$archive.sha256" "$base/$archive.sha256"
    expected="$(cut -d ' ' -f 1 <"$work/$archive.sha256")"
    actual="$( (sha256sum "$work/$archive" 2>/dev/null || shasum -a 256 "$work/$archive") | cut -d ' ' -f 1)"
    if [[ $expected != "$actual" ]]; then
        echo "::error::$archive does not match its checksum (expected $expected, got $actual); nothing was installed"
        exit 1
    fi
    mkdir -p "$dir.partial"
    if [[ $archive == *.zip ]]; then
        unzip -q -o "$work/$archive" -d "$dir.partial"
    else
        tar -xzf "$work/$archive" -C "$dir.partial"
    fi
    # Only a complete install takes the cached directory's name.
    rm -rf "$dir"
    mv "$dir.partial" "$dir"
fi

if [[ -n ${GITHUB_PATH:-} ]]; then
    echo "$dir" >>"$GITHUB_PATH"
fi
"$dir/$exe" --version
