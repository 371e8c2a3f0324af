/** Where the tests find Redis and Postgres: REDIS_URL / DATABASE_URL, defaulting to the local servers. */
export function redisUrl(): string {
  return process.env.REDIS_URL || "redis://127.0.0.1:6379";
}

function baseDatabaseUrl(): URL {
  return new URL(process.env.DATABASE_URL || "postgres://postgres@127.0.0.1:5432/postgres");
}

export function databaseUrl(name: string): string {
  const url = baseDatabaseUrl();
  url.pathname = `/${name}`;
  return url.toString();
}

export function adminUrl(): string {
  return databaseUrl("postgres");
}
