"""The ``sqlkv`` command line: REPL (`repl`), scripts (`script`), dot commands (`dot`), rendering (`render`).

`main.main` is the console-script entry point; ``python -m sqlkv.cli`` runs it too.
"""
