/** What a key may do: everything (`admin`), its tenant's tasks (`submit`), or only read (`read`). */
export type KeyRole = 'admin' | 'submit' | 'read';
export const KEY_ROLES: readonly KeyRole[] = ['admin', 'submit', 'read'];

/** A key's tenant and role. */
export interface KeyGrant {
  tenant: string;
  role: KeyRole;
}
