// libpq, PostgreSQL's own C client: it reads PGPASSWORD, ~/.pgpass and the other PG* variables,
// and negotiates TLS when the server offers it (sslmode=prefer), as psql does.
#ifndef DOCFS_CPOSTGRESQL_SHIM_H
#define DOCFS_CPOSTGRESQL_SHIM_H
#include <libpq-fe.h>
#endif
