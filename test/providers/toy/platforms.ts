// The one line that adds the toy: the build's list plus its module. In the build itself the line
// goes into src/providers/platforms.ts's PLATFORMS.
import { PLATFORMS } from '../../../src/providers/platforms.js';
import { toy } from './index.js';

export const TOY_PLATFORMS = [...PLATFORMS, toy] as const;
