-- A recipient outside India (state code 96, Foreign Country) is invoiced as an export of
-- services, and an export invoice names the recipient's country (Rule 46 of the CGST Rules). The
-- country is set exactly when the state code is 96; Indian recipients have none.
ALTER TABLE billing_profiles
  ADD COLUMN country text CHECK (country IS NULL OR char_length(country) BETWEEN 1 AND 100),
  ADD CONSTRAINT billing_profiles_country_exactly_abroad CHECK ((state_code = '96') = (country IS NOT NULL));
