// Entry point for the payload schemas; each module is a leaf, so this re-export adds no import cycle.
export * from './primitives.js';
export * from './transaction.js';
export * from './supply.js';
export * from './account.js';
export * from './post-import.js';
