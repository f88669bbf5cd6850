//! Local operations: which operator, data type and element width exist.
//!
//! The table is the thesis' (section 2.2.3) made exact by the C API contract:
//! signed and unsigned integers of 8, 16, 32 and 64 bits, floats of 16 (IEEE
//! binary16), 32 and 64 bits, bfloat16 (16 bits); the bitwise operators only
//! on integers; `WTIME` ignores type and width and writes one 64-bit double.
//! How a 16-bit float combines is in [`crate::half`].

/// The operator of a local operation, with the C API's numbering.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum ReduceOp {
    /// `res[i] = max(a[i], b[i])`
    Max = 0,
    /// `res[i] = min(a[i], b[i])`
    Min = 1,
    /// `res[i] = a[i] + b[i]` (integers wrap)
    Add = 2,
    /// `res[i] = a[i] - b[i]` (integers wrap)
    Sub = 3,
    /// `res[i] = a[i] / b[i]` (integer division by zero is an execution error)
    Div = 4,
    /// `res[i] = a[i] * b[i]` (integers wrap)
    Mul = 5,
    /// `res[i] = a[i]`
    Copy = 6,
    /// `res[i] = a[i] & b[i]` (integers only)
    And = 7,
    /// `res[i] = a[i] | b[i]` (integers only)
    Or = 8,
    /// `res[i] = a[i] ^ b[i]` (integers only)
    Xor = 9,
    /// writes the time in seconds as one f64 into `res`
    Wtime = 10,
}

impl ReduceOp {
    /// All operators, in C API order.
    pub const ALL: [ReduceOp; 11] = [
        ReduceOp::Max,
        ReduceOp::Min,
        ReduceOp::Add,
        ReduceOp::Sub,
        ReduceOp::Div,
        ReduceOp::Mul,
        ReduceOp::Copy,
        ReduceOp::And,
        ReduceOp::Or,
        ReduceOp::Xor,
        ReduceOp::Wtime,
    ];

    /// The operator with C API number `v`.
    pub fn from_raw(v: i64) -> Option<ReduceOp> {
        usize::try_from(v).ok().and_then(|i| Self::ALL.get(i).copied())
    }

    /// The C name, for messages.
    pub fn name(self) -> &'static str {
        match self {
            ReduceOp::Max => "GOAL_MAX",
            ReduceOp::Min => "GOAL_MIN",
            ReduceOp::Add => "GOAL_ADD",
            ReduceOp::Sub => "GOAL_SUB",
            ReduceOp::Div => "GOAL_DIV",
            ReduceOp::Mul => "GOAL_MUL",
            ReduceOp::Copy => "GOAL_COPY",
            ReduceOp::And => "GOAL_AND",
            ReduceOp::Or => "GOAL_OR",
            ReduceOp::Xor => "GOAL_XOR",
            ReduceOp::Wtime => "GOAL_WTIME",
        }
    }

    /// Whether the operator reads a second operand.
    pub fn is_binary(self) -> bool {
        !matches!(self, ReduceOp::Copy | ReduceOp::Wtime)
    }
}

/// The element type of a local operation, with the C API's numbering.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum DataType {
    /// Two's complement signed integer.
    SInt = 0,
    /// Unsigned integer.
    UInt = 1,
    /// IEEE 754 binary floating point (binary16, binary32, binary64).
    Float = 2,
    /// bfloat16: the upper half of an IEEE binary32 (8 exponent bits, 7
    /// fraction bits); 16 bits only.
    BFloat = 3,
}

impl DataType {
    /// The type with C API number `v`.
    pub fn from_raw(v: i64) -> Option<DataType> {
        match v {
            0 => Some(DataType::SInt),
            1 => Some(DataType::UInt),
            2 => Some(DataType::Float),
            3 => Some(DataType::BFloat),
            _ => None,
        }
    }

    /// The C name, for messages.
    pub fn name(self) -> &'static str {
        match self {
            DataType::SInt => "GOAL_SINT",
            DataType::UInt => "GOAL_UINT",
            DataType::Float => "GOAL_FLOAT",
            DataType::BFloat => "GOAL_BFLOAT",
        }
    }

    /// Whether `bits` is a width this type has.
    pub fn has_width(self, bits: i64) -> bool {
        match self {
            DataType::SInt | DataType::UInt => matches!(bits, 8 | 16 | 32 | 64),
            DataType::Float => matches!(bits, 16 | 32 | 64),
            DataType::BFloat => bits == 16,
        }
    }

    /// Whether the type is a floating-point one (no bitwise operators).
    pub fn is_float(self) -> bool {
        matches!(self, DataType::Float | DataType::BFloat)
    }

    /// The widths this type takes, for messages.
    fn widths(self) -> &'static str {
        match self {
            DataType::SInt | DataType::UInt => "8, 16, 32 or 64",
            DataType::Float => "16, 32 or 64",
            DataType::BFloat => "16 only",
        }
    }
}

/// Checks an (operator, type, width) triple; `Err` says what is wrong.
pub(crate) fn check_local(op: i64, dt: i64, width: i64) -> Result<(ReduceOp, DataType, u8), String> {
    let Some(op) = ReduceOp::from_raw(op) else {
        return Err(format!("operator {op} does not exist (GOAL_MAX..GOAL_WTIME are 0..10)"));
    };
    if op == ReduceOp::Wtime {
        // WTIME has no type checking: it always writes one 64-bit double.
        return Ok((op, DataType::Float, 64));
    }
    let Some(ty) = DataType::from_raw(dt) else {
        return Err(format!("data type {dt} does not exist (GOAL_SINT, GOAL_UINT, GOAL_FLOAT, GOAL_BFLOAT are 0, 1, 2, 3)"));
    };
    if !ty.has_width(width) {
        return Err(format!("element width {width} bits does not exist for {} (it takes {})", ty.name(), ty.widths()));
    }
    if matches!(op, ReduceOp::And | ReduceOp::Or | ReduceOp::Xor) && ty.is_float() {
        return Err(format!(
            "{} is not defined on {} of width {width} (bitwise operators take GOAL_SINT and GOAL_UINT)",
            op.name(),
            ty.name()
        ));
    }
    Ok((op, ty, width as u8))
}
