import { z } from 'zod';

/** A model id (`provider:model` or a bare id), or a list of up to 5: the first, then the others after a provider error. */
export const modelIdsSchema = z.union([z.string().min(1).max(200), z.array(z.string().min(1).max(200)).min(1).max(5)]);
