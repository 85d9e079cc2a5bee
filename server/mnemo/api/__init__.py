"""The shapes of what the daemon answers, as models that any layer may build or read.

Pure pydantic models over the domain models: nothing here imports the store, the index, the
daemon or a client, so the packages below the daemon can return them and the clients can parse
them.
"""
