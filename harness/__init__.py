"""The harness: evaluator, worker, timing, speed of light, report, progress, packager and
submitter. It runs kernels and judges them; nothing in it may be packaged into a submission (the kit,
`shared/`, is what a submission may contain)."""
