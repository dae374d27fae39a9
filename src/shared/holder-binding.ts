// The holder-binding policy (docs/api-reference.md 11.2): whether a lock opens for a credential bound to no phone key.

export const HOLDER_BINDING_VALUES = ['optional', 'required'] as const;

/** `optional`: a credential without `cnf` opens as before; `required`: a lock refuses it. */
export type HolderBinding = (typeof HOLDER_BINDING_VALUES)[number];

/** A tenant's policy until an operator changes it, so that phones without a key keep working after an upgrade. */
export const DEFAULT_HOLDER_BINDING: HolderBinding = 'optional';
