#!/usr/bin/env sh
# Packages editors/vscode as editors/goat-mountain-goat.vsix, VS Code's extension file, with
# Microsoft's @vscode/vsce tool from npm (Node.js needed).  Install the result with
#     code --install-extension editors/goat-mountain-goat.vsix
set -eu
cd "$(dirname "$0")/vscode"
npx --yes @vscode/vsce@3 package --allow-missing-repository --skip-license \
    --out ../goat-mountain-goat.vsix
