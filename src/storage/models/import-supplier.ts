import { DEFAULT_REGION } from '../../domain/region/names.js';
import { Schema, type InferSchemaType } from 'mongoose';
import { supplierStatuses } from '../../vocabulary/supplier-statuses.js';

export const importSupplierSchema = new Schema(
  {
    code: { type: String, required: true, unique: true },
    organisationId: { type: Schema.Types.ObjectId, required: true, index: true },
    status: { type: String, enum: supplierStatuses, required: true, default: 'Ongoing' },
    documentRoot: { type: String, default: '' },
    documentBucket: { type: String, default: null },
    sendMigrationEmail: { type: Boolean, default: false },
    region: { type: String, default: DEFAULT_REGION },
    operationsTeamAutoAllocation: { type: Boolean, default: false },
    /** The team v2 schedules use when the account payload names none (`supplier set-default-team`). */
    defaultOperationsTeamId: { type: Schema.Types.ObjectId, default: null },
  },
  { timestamps: true, collection: 'import_suppliers' },
);
export type ImportSupplier = InferSchemaType<typeof importSupplierSchema>;
