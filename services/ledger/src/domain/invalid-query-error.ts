/**
 * Why a read (GetBalance, ListUsage) was refused. Reads have no result code for bad input, so
 * the transport answers the gRPC status INVALID_ARGUMENT with this message, which we wrote.
 */
export class InvalidQueryError extends Error {
  constructor(detail: string) {
    super(detail);
    this.name = 'InvalidQueryError';
  }
}
