"""`--runner modal`: run `nox -s bench`, `nox -s b200` or `nox -s test` on a GPU in Modal containers.

    python -m harness.runner bench|b200|test [--gpu B200|H200|H100] [--timeout S] [--max-gpus N]
                             [--dry-run] [the session's own arguments]

Modules, each small and importable without Modal (only modal_backend imports it, and only when a run
really starts):
    plan          the jobs (one container and one GPU each), their estimated GPU-minutes and cost
    image         the image spec: the Dockerfile's base and system packages, the leaderboard lock's
                  packages, Modal's image builder and the Python it gives
    bundle        the working tree as it is (uncommitted edits included) and its provenance
    job           the body that runs in each container (and runs as well on a local CPU, in the tests)
    outcomes      what a run gives back: results, a job's error, the app, an interrupt
    merge         the jobs' results into one results JSON, as a local run writes it
    errors        the one-line errors and their exit statuses
    credentials   whether Modal's client will find credentials, decided as the client decides
    modal_errors  Modal's exceptions, matched by class, made one line each
    modal_backend Modal itself: the image, the function, one call per job, Ctrl-C
    cli           the command line
"""
