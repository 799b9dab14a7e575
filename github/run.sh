#!/usr/bin/env bash
# Runs `opencode github run` with the action's inputs (INPUT_* variables set by action.yml) and
# writes the session's export for the artifact step.
set -euo pipefail

args=(github run --agent "${INPUT_AGENT:-build}" --mentions "${INPUT_MENTIONS:-/opencode,/oc}")
args+=(--export "${RUNNER_TEMP:-/tmp}/opencode-session.json")
if [[ -n ${INPUT_MODEL:-} ]]; then
    args+=(--model "$INPUT_MODEL")
fi
if [[ -n ${INPUT_PROMPT:-} ]]; then
    args+=(--prompt "$INPUT_PROMPT")
fi
exec "${OPENCODE_BIN:-opencode}" "${args[@]}"
