import type {
  BillingDocumentsImport,
  NotesImport,
  PaymentInstruction,
  StatementsImport,
  TransactionsImport,
} from '../../../schemas/post-import.js';
import { child } from '../field-error.js';
import type { Loose } from '../salvage.js';
import { checkIssuedDate, checkNote, checkStatements } from './documents.js';
import { checkChoice, checkOrder, checkUnique, eachParsed, type RuleEnv } from './env.js';
import { checkTransaction, checkTransactionIds, type LocatedTransaction } from './transactions.js';

export function checkNotesImport(env: RuleEnv, body: Loose<NotesImport>): void {
  eachParsed(body.notes, (n, i) => checkNote(env, n, child('notes', i)));
}

function checkTransactionList(
  env: RuleEnv,
  list: Loose<TransactionsImport>['transactions'],
  base: string,
): LocatedTransaction[] {
  const located: LocatedTransaction[] = [];
  eachParsed(list, (t, i) => {
    const attr = child(base, i);
    checkTransaction(env, t, attr);
    located.push({ txn: t, attr });
  });
  return located;
}

export function checkTransactionsImport(env: RuleEnv, body: Loose<TransactionsImport>): void {
  checkTransactionIds(env, checkTransactionList(env, body.transactions, 'transactions'));
}

const PERIOD_FIELDS = ['bill_period_from_date', 'bill_period_to_date'] as const;

export function checkBillingDocumentsImport(env: RuleEnv, body: Loose<BillingDocumentsImport>): void {
  const located: LocatedTransaction[] = [];
  const identifiers: { key: string | undefined; attr: string }[] = [];
  eachParsed(body.historical_billing_documents, (doc, i) => {
    const attr = child('historical_billing_documents', i);
    identifiers.push({
      key: doc.billing_document_identifier,
      attr: child(attr, 'billing_document_identifier'),
    });
    const type = doc.billing_document_type;
    if (
      type !== undefined &&
      body.billing_document_type !== undefined &&
      type !== body.billing_document_type
    ) {
      env.out.add(
        'billing_document_type_mismatch',
        child(attr, 'billing_document_type'),
        `The request imports ${body.billing_document_type} documents.`,
      );
    }
    for (const field of PERIOD_FIELDS) {
      if (type === 'PERIOD_BASED' && env.isComplete(doc) && doc[field] === undefined) {
        env.out.add(
          'required_for_document_type',
          child(attr, field),
          `PERIOD_BASED documents need ${field}.`,
        );
      }
      if (type === 'ITEM_BASED' && doc[field] !== undefined) {
        env.out.add(
          'field_not_allowed_for_document_type',
          child(attr, field),
          `ITEM_BASED documents have no ${field}.`,
        );
      }
    }
    checkOrder(env, doc.bill_period_from_date, doc.bill_period_to_date, child(attr, 'bill_period_from_date'));
    checkIssuedDate(env, doc.issued_date, child(attr, 'issued_date'));
    located.push(...checkTransactionList(env, doc.transactions, child(attr, 'transactions')));
  });
  checkUnique(env, identifiers, 'duplicate_billing_document_identifiers', 'billing_document_identifier');
  located.push(
    ...checkTransactionList(
      env,
      body.additional_historical_transactions,
      'additional_historical_transactions',
    ),
  );
  checkTransactionIds(env, located);
}

export function checkStatementsImport(env: RuleEnv, body: Loose<StatementsImport>): void {
  checkStatements(env, body.statements, 'statements');
}

export function checkPaymentInstruction(env: RuleEnv, body: Loose<PaymentInstruction>): void {
  checkChoice(env, 'payment_instruction_vendor', body.vendor, 'vendor');
  checkChoice(env, 'payment_instruction_type', body.type, 'type');
}
