package main

import (
	"errors"

	"github.com/nyaruka/phonenumbers"
)

var errInvalidPhone = errors.New("phone_number is not a valid phone number")

// normalizePhone parses a phone number as written by a person or a CRM
// ("0912345678", "84912345678", "+84 912 345 678"), reading numbers without
// a country code as numbers of region, and returns it in E.164.
func normalizePhone(raw, region string) (string, error) {
	num, err := phonenumbers.Parse(raw, region)
	if err != nil || !phonenumbers.IsValidNumber(num) {
		return "", errInvalidPhone
	}
	return phonenumbers.Format(num, phonenumbers.E164), nil
}
