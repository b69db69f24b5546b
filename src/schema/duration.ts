// The Duration scalar: an ISO-8601 duration of days, hours, minutes and seconds ("PT30M",
// "PT1H30M", "P1D", "PT0.5S"), seconds inside the graph. Years, months and weeks are refused:
// their length depends on the calendar.
import { GraphQLError, Kind } from 'graphql';
import { builder } from './builder.js';

const ISO_DURATION = /^P(?:(\d+(?:\.\d+)?)D)?(?:T(?:(\d+(?:\.\d+)?)H)?(?:(\d+(?:\.\d+)?)M)?(?:(\d+(?:\.\d+)?)S)?)?$/;

export function parseDuration(value: unknown): number {
  const m = typeof value === 'string' ? ISO_DURATION.exec(value) : null;
  // "P" and "PT" match the pattern with nothing in them; a duration needs at least one part.
  if (m && (m[1] ?? m[2] ?? m[3] ?? m[4]) !== undefined && !value!.toString().endsWith('T')) {
    const [d, h, min, s] = [m[1], m[2], m[3], m[4]].map((x) => Number(x ?? 0));
    return d! * 86_400 + h! * 3600 + min! * 60 + s!;
  }
  throw new GraphQLError('Duration must be an ISO-8601 duration of days, hours, minutes and seconds, e.g. "PT30M" or "P1DT2H"', {
    extensions: { code: 'BAD_INPUT' },
  });
}

export function formatDuration(seconds: number): string {
  const h = Math.floor(seconds / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const s = Math.round((seconds % 60) * 1000) / 1000;
  const time = `${h ? `${h}H` : ''}${m ? `${m}M` : ''}${s || (!h && !m) ? `${s}S` : ''}`;
  return `PT${time}`;
}

builder.scalarType('Duration', {
  description: 'A length of time as an ISO-8601 duration of days, hours, minutes and seconds, e.g. "PT30M", "PT1H30M", "P1D"',
  serialize: formatDuration,
  parseValue: parseDuration,
  parseLiteral: (ast) => parseDuration(ast.kind === Kind.STRING ? ast.value : undefined),
});
