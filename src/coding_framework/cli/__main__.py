from coding_framework.cli.main import app

app()
