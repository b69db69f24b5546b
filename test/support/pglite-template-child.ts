// Writes the migrated PGlite dump to the path given (test/support/pglite-template.ts), whole or not
// at all: the two projects' global setups, or two runs, may make it at once.
import { renameSync, writeFileSync } from 'node:fs';
import { drizzle } from 'drizzle-orm/pglite';
import { migrate } from 'drizzle-orm/pglite/migrator';
import { MIGRATIONS_DIR } from '../../src/config/install.js';
import { openPglite } from '../../src/store/pglite.js';

const target = process.argv[2];
if (!target) throw new Error('usage: pglite-template-child.ts <dump.tar>');
const client = await openPglite('memory://');
await migrate(drizzle(client), { migrationsFolder: MIGRATIONS_DIR });
const dump = Buffer.from(await (await client.dumpDataDir('none')).arrayBuffer());
await client.close();
const partial = `${target}.${process.pid}.partial`;
writeFileSync(partial, dump);
renameSync(partial, target);
