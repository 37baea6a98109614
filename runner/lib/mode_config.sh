# shellcheck shell=bash
# runner/lib/mode_config.sh: the per-mode `debug:` and `dry_run:` config keys
#, read as the upstream Primus runner reads them
# (AMD-AGI/Primus fd1eeabb: direct.sh:296-312, slurm.sh:146-161,
# slurm-entry:103-122): `main.<key>` or `<mode>.<key>` true turns the flag on;
# a command-line flag is never turned off by the config.
# The slurm entry reads no configuration of its own on most launches, so it
# exports PRIMUS_VIA_SLURM_ENTRY=1 and the mode it starts also honours the
# `slurm.` keys (a dry run stops there, before anything starts).
# Owns only the reading of these keys from PRIMUS_CONFIG (runner/lib/config.sh,
# loaded by the caller); it never loads the configuration itself.

# primus_mode_config_flags MODE DRY_VAR DEBUG_VAR: sets DRY_VAR / DEBUG_VAR to 1
# when the config turns them on for MODE (a launch mode, whose config section it reads), and says
# which key did it.
primus_mode_config_flags() {
  local mode=$1 section key
  local -a sections=(main "$mode")
  [[ $mode == slurm || ${PRIMUS_VIA_SLURM_ENTRY:-0} != 1 ]] || sections+=(slurm)
  for section in "${sections[@]}"; do
    for key in dry_run debug; do
      [[ ${PRIMUS_CONFIG[$section.$key]:-0} == 1 ]] || continue
      if [[ $key == dry_run && ${!2} != 1 ]]; then
        printf -v "$2" '%s' 1
        LOG_INFO "dry run: config $section.dry_run is true (nothing will start)"
      elif [[ $key == debug && ${!3} != 1 ]]; then
        printf -v "$3" '%s' 1
        LOG_INFO "debug logging: config $section.debug is true"
      fi
    done
  done
}
