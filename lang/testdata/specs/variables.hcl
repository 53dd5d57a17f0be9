# Variable types, defaults and validation rules.
variable "runs" {
  type    = number
  default = 0 # ERROR: runs must be at least 1.

  validation {
    condition     = var.runs >= 1
    error_message = "runs must be at least 1."
  }
}

variable "label" {
  type    = number
  default = "many" # ERROR: Invalid default value for variable
}

variable "needed" { # ERROR: No value for required variable
  type = string
}

variable "bad" {
  type    = strin # ERROR: The keyword "strin" is not a valid type specification
  default = "x"
}

variable "9lives" { # ERROR: Invalid variable name
  default = 1
}

variable "check" {
  default = 1
  validation {
    condition     = local.x > 0 # ERROR: A validation condition may only refer to variables
    error_message = "no."
  }
}
