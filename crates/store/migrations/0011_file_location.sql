-- Where a file's bytes are: 'db' (in files.data) or 'object' (in the object store that
-- INVOICING_STORAGE_URL names, under {prefix}/{company_id}/{id}; files.data is empty).
-- Rows written before object storage existed keep their bytes and stay readable after
-- a deployment switches to an object store.
ALTER TABLE files ADD COLUMN location TEXT NOT NULL DEFAULT 'db';
