# required_version is checked before anything else.
infercrane {
  required_version = ">= 99.0" # ERROR: This spec requires infercrane >= 99.0
}

modle "not reported" {
}
