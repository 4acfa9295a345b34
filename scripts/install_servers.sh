#!/usr/bin/env bash
# Install the demo MCP servers, each in its own environment under DIR, at setup time
# (as hosts do with uvx/npx) so that nothing is downloaded when the demo runs.
#
#   bash scripts/install_servers.sh .servers
#
# Python servers get one venv each: DIR/<package>/bin/<package>. Their SDK needs differ
# (mcp-server-time/-git require mcp>=2.3; -calculator and -sqlite crash on mcp 2.x), so
# sharing one environment is impossible. npm servers go to DIR/npm when npm exists.
# Idempotent: a server whose venv already answers an MCP `initialize` is skipped.
set -euo pipefail

DIR=${1:?usage: install_servers.sh DIR}
PYTHON=${PYTHON:-python3}
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
SMOKE=$(mktemp -d)
trap 'rm -rf "$SMOKE"' EXIT

# name | pip requirements (pinned: the versions this project was tested with) | smoke-test args
PY_SERVERS=(
  "mcp-server-time|mcp-server-time==2026.10.19|"
  "mcp-server-git|mcp-server-git==2026.10.19|"
  "mcp-server-sqlite|mcp-server-sqlite==2025.4.25 mcp[cli]<2|--db-path $SMOKE/smoke.db"
  "mcp-server-calculator|mcp-server-calculator==0.2.1 mcp<2|"
)
NPM_PACKAGES=(
  "@modelcontextprotocol/server-filesystem@2026.8.31"
  "@modelcontextprotocol/server-memory@2026.8.31"
)
INIT='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"install_servers","version":"0"}}}'

# Start a server, send `initialize`, close stdin: it works if it answers with a result.
answers_initialize() {
  local out
  out=$(printf '%s\n' "$INIT" | timeout 30 "$@" 2>/dev/null | head -c 4096) || true
  [[ $out == *'"result"'* ]]
}

for entry in "${PY_SERVERS[@]}"; do
  IFS='|' read -r name reqs smoke_args <<<"$entry"
  venv="$DIR/$name"
  exe="$venv/bin/$name"
  # shellcheck disable=SC2086  # smoke_args and reqs are word lists on purpose
  if [[ -x $exe ]] && answers_initialize "$exe" $smoke_args; then
    echo "$name: already installed in $venv"
    continue
  fi
  echo "$name: installing into $venv"
  rm -rf "$venv"
  "$PYTHON" -m venv "$venv"
  # shellcheck disable=SC2086
  if ! "$venv/bin/python" -m pip install -q --disable-pip-version-check $reqs; then
    rm -rf "$venv"
    echo "ERROR: pip could not install $name ($reqs); see the pip output above" >&2
    exit 1
  fi
  # shellcheck disable=SC2086
  if ! answers_initialize "$exe" $smoke_args; then
    echo "ERROR: $name installed but does not answer MCP initialize; run $exe $smoke_args by hand to see why" >&2
    exit 1
  fi
  echo "$name: ok"
done

if ! command -v git >/dev/null; then
  echo "note: git is not on PATH; mcp-server-git will start but its tools will fail"
fi

if ! command -v npm >/dev/null || ! command -v node >/dev/null; then
  echo "note: npm/node not found; skipping the npm servers (filesystem, memory)"
  exit 0
fi
# Prints the npm packages that are missing or do not answer `initialize`.
broken_npm() {
  local pkg base main args
  for pkg in "${NPM_PACKAGES[@]}"; do
    base=${pkg%@*}
    main="$DIR/npm/node_modules/$base/dist/index.js"
    args=()
    [[ $base == */server-filesystem ]] && args=("$SMOKE")
    if ! [[ -f $main ]] || ! MEMORY_FILE_PATH="$SMOKE/memory.jsonl" answers_initialize node "$main" "${args[@]}"; then
      echo "$base"
    fi
  done
}
if [[ -z $(broken_npm) ]]; then
  echo "npm servers: already installed in $DIR/npm"
  exit 0
fi
echo "npm servers: installing into $DIR/npm"
npm install --prefix "$DIR/npm" --no-audit --no-fund --loglevel=error "${NPM_PACKAGES[@]}"
broken=$(broken_npm)
if [[ -n $broken ]]; then
  echo "ERROR: installed but not answering MCP initialize: $broken" >&2
  exit 1
fi
echo "npm servers: ok"
