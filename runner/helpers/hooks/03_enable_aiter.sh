#!/usr/bin/env bash
# 03_enable_aiter.sh: quiet AITER's log (upstream AMD-AGI/Primus@fd1eeabb runner/helpers/hooks/).
# primus-hook-when-unset: AITER_LOG_LEVEL
#
# No gate: emits env.AITER_LOG_LEVEL=ERROR unless AITER_LOG_LEVEL is already
# set (the reference launcher forces ERROR; your value is kept here).
# Changes no file.
set -euo pipefail

if [[ -n ${AITER_LOG_LEVEL:-} ]]; then exit 0; fi
printf 'env.AITER_LOG_LEVEL=ERROR\n'
