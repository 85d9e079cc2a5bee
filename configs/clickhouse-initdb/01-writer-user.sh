#!/bin/bash
# The sidecar writer's own ClickHouse user (its password from the environment, never in a file).
# Run by the ClickHouse image at its first start; mnemo server setup then gives it the member role.
set -euo pipefail
password=${MNEMO_WRITER_PASSWORD//\\/\\\\}   # a ClickHouse string literal: \ then ' escaped
password=${password//\'/\\\'}
clickhouse client --user "$CLICKHOUSE_USER" --password "$CLICKHOUSE_PASSWORD" --query \
    "CREATE USER IF NOT EXISTS writer IDENTIFIED WITH sha256_password BY '$password'"
