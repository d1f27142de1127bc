import { Schema, type InferSchemaType } from 'mongoose';

/** A statement reference (from the account payload or a historical import). Files are never stored. */
export const statementSchema = new Schema(
  {
    accountId: { type: Schema.Types.ObjectId, required: true },
    statementId: { type: String, required: true },
    billPeriodFromDate: { type: String, required: true },
    billPeriodToDate: { type: String, required: true },
    issuedDate: { type: String, default: null },
    number: { type: String, default: null },
    grossAmountMinor: { type: Number, default: null },
    supplyType: { type: String, default: null },
    /** bucket/root/path of the PDF in object storage, when given. */
    documentLocation: { type: String, default: null },
    origin: { type: String, enum: ['account_payload', 'historical_import'], required: true },
  },
  { timestamps: true, collection: 'statements' },
);
statementSchema.index({ accountId: 1, statementId: 1 }, { unique: true });
export type Statement = InferSchemaType<typeof statementSchema>;
