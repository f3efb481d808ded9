"""`verirl serve api`, `verirl worker`, `verirl db upgrade|import-tasks`."""
from __future__ import annotations

from services.cli import UsageError, command_group


def register(sub) -> None:
    api = command_group(sub, "serve", "run a service").add_parser("api", help="the API (FastAPI on uvicorn); settings from VERIRL_* variables")
    api.add_argument("--host", help="bind address (default: VERIRL_API_HOST, 127.0.0.1)")
    api.add_argument("--port", type=int, help="port (default: VERIRL_API_PORT, 8000)")
    api.set_defaults(handler=serve_api)

    worker = sub.add_parser("worker", help="a Celery grading worker (needs VERIRL_BROKER_URL)")
    worker.add_argument("--queues", default="rocq", help="comma-separated backend queues (rocq,lean,nd,terminal,swe)")
    worker.add_argument("--concurrency", type=int, default=1, help="grading processes in this worker")
    worker.add_argument("--name", help="Celery node name (default: verirl-<queues>@<host>-<pid>)")
    worker.set_defaults(handler=run_worker)

    actions = command_group(sub, "db", "the API database (VERIRL_DATABASE_URL)")
    actions.add_parser("upgrade", help="apply Alembic migrations up to the latest").set_defaults(handler=db_upgrade)
    importer = actions.add_parser("import-tasks", help="load data/<rung>/<lang>/tasks.jsonl into the tasks table")
    importer.add_argument("--data-dir", help="default: VERIRL_DATA_DIR (data)")
    importer.set_defaults(handler=db_import_tasks)


def serve_api(args) -> int:
    import uvicorn

    from services.api.app import create_app
    from shared.settings import get_settings

    settings = get_settings()
    port = settings.api_port if args.port is None else args.port
    if not 0 < port < 65536:
        raise UsageError(f"--port must be between 1 and 65535, got {port}")
    uvicorn.run(create_app(settings), host=args.host or settings.api_host, port=port, log_level="info")
    return 0


def run_worker(args) -> int:
    import os
    import socket

    from services.grader.worker import QUEUES, app
    from shared.settings import get_settings

    if not get_settings().broker_url:
        raise UsageError("no broker configured: set VERIRL_BROKER_URL (e.g. redis://127.0.0.1:6379/0)")
    queues = [q.strip() for q in args.queues.split(",") if q.strip()]
    if unknown := [q for q in queues if q not in QUEUES]:
        raise UsageError(f"unknown queue(s) {', '.join(unknown)}; choose from {', '.join(QUEUES)}")
    if args.concurrency < 1:
        raise UsageError("--concurrency must be at least 1")
    name = args.name or f"verirl-{'-'.join(queues)}@{socket.gethostname()}-{os.getpid()}"
    if {"swe", "terminal"} & set(queues):
        from services.grader.venv_pool import warm_up

        warm_up()  # every venv slot is built and verified before the first job is taken
    app.worker_main(["worker", "--queues", ",".join(queues), "--concurrency", str(args.concurrency),
                     "--hostname", name, "--loglevel", "INFO", "--without-gossip", "--without-mingle"])
    return 0


def db_upgrade(args) -> int:
    from services.api.db import get_engine, upgrade
    from shared.settings import get_settings

    upgrade(get_engine(get_settings().database_url))
    return 0


def db_import_tasks(args) -> int:
    from pathlib import Path

    from services.api.db import get_engine, upgrade
    from services.api.tasks_import import import_tasks
    from shared.settings import get_settings

    settings = get_settings()
    data_dir = Path(args.data_dir) if args.data_dir else settings.data_dir
    if not data_dir.is_dir():
        raise UsageError(f"no such data directory: {data_dir}")
    engine = get_engine(settings.database_url)
    upgrade(engine)
    try:
        counts = import_tasks(engine, data_dir)
    except ValueError as exc:  # a line that is not a task
        raise UsageError(str(exc)) from None
    for name, count in counts.items():
        print(f"{name}: {count} tasks")
    if not counts:
        print(f"no {data_dir}/<rung>/<lang>/tasks.jsonl files found")
    return 0
