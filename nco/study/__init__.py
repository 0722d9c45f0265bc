"""Studies: many `nco-train` runs compared on the same footing, defined in configs/study/*.yaml
(`nco-study`).

`spec` reads study files and lays out a study's folders; `chunks` runs training in resumable
chunks with the code version of each; `parts` decodes test sets in resumable parts; `sl_vs_si`
and `epochs` are the two kinds of study; `curves`, `report` and `provenance` read runs (through
`nco.runs`) into reports and the manifests of shipped checkpoints.
"""
