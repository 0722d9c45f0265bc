"""Studies: many `nco-train` runs compared on the same footing, defined in configs/study/*.yaml.

`spec` reads study files; `chunks` runs training in resumable chunks with provenance;
`parts` decodes test sets in resumable parts; `sl_vs_si` and `epochs` are the two kinds of
study; `curves` and `provenance` read runs into reports and manifests (`nco-study`).
"""
