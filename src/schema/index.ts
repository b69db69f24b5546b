// Imports every type file and builds the schema; nothing else.
import { builder } from './builder.js';
import './enums.js';
import './provider.js';
import './metric-series.js';
import './job-filter.js';
import './job-connection.js';
import './project.js';
import './job.js';
import './node.js';
import './gpu.js';

export const schema = builder.toSchema({ sortSchema: false });
