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

/// The first C API value of a user operator (see the module documentation).
pub const USER_OP_FIRST: i64 = 1 << 16;

/// A user operator: the runtime's number for it and whether it commutes
/// (`a op b == b op a`). Every user operator is taken to be associative.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct UserOp {
    /// The runtime's number, `< 2^30 - 2^15`.
    pub id: u32,
    /// Whether the collectives may combine operands in any order.
    pub commutative: bool,
}

impl UserOp {
    /// The largest id a C `int` can carry.
    pub const MAX_ID: u32 = ((i32::MAX as i64 - USER_OP_FIRST) / 2) as u32;

    /// The C API value (`GOAL_Op`).
    pub fn raw(self) -> i64 {
        USER_OP_FIRST + 2 * self.id as i64 + self.commutative as i64
    }

    /// The user operator with C API value `v`, if `v` is one.
    pub fn from_raw(v: i64) -> Option<UserOp> {
        let k = v.checked_sub(USER_OP_FIRST)?;
        if k < 0 || k > i32::MAX as i64 - USER_OP_FIRST {
            return None;
        }
        Some(UserOp { id: (k / 2) as u32, commutative: k % 2 == 1 })
    }
}

/// The operator of a local operation: built-in or the user's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    /// One of goal's operators.
    Builtin(ReduceOp),
    /// A function the application registered.
    User(UserOp),
}

impl Op {
    /// The operator with C API value `v`.
    pub fn from_raw(v: i64) -> Option<Op> {
        ReduceOp::from_raw(v).map(Op::Builtin).or_else(|| UserOp::from_raw(v).map(Op::User))
    }

    /// The C API value.
    pub fn raw(self) -> i64 {
        match self {
            Op::Builtin(o) => o as i64,
            Op::User(u) => u.raw(),
        }
    }

    /// The C name or a description, for messages.
    pub fn name(self) -> String {
        match self {
            Op::Builtin(o) => o.name().to_string(),
            Op::User(u) => format!("user operation {}", u.raw()),
        }
    }

    /// Whether the operator reads a second operand.
    pub fn is_binary(self) -> bool {
        match self {
            Op::Builtin(o) => o.is_binary(),
            Op::User(_) => true,
        }
    }

    /// The built-in operator, `None` for a user operator.
    pub fn builtin(self) -> Option<ReduceOp> {
        match self {
            Op::Builtin(o) => Some(o),
            Op::User(_) => None,
        }
    }
}

impl From<ReduceOp> for Op {
    fn from(o: ReduceOp) -> Op {
        Op::Builtin(o)
    }
}

impl PartialEq<ReduceOp> for Op {
    fn eq(&self, o: &ReduceOp) -> bool {
        *self == Op::Builtin(*o)
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
    /// Opaque elements of any whole number of bytes (a width that is a
    /// positive multiple of 8 bits): only user operators and COPY take them.
    Bytes = 4,
}

impl DataType {
    /// The type with C API number `v`.
    pub fn from_raw(v: i64) -> Option<DataType> {
        match v {
            0 => Some(DataType::SInt),
            1 => Some(DataType::UInt),
            2 => Some(DataType::Float),
            3 => Some(DataType::BFloat),
            4 => Some(DataType::Bytes),
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
            DataType::Bytes => "GOAL_BYTES",
        }
    }

    /// Whether `bits` is a width this type has.
    pub fn has_width(self, bits: i64) -> bool {
        match self {
            DataType::SInt | DataType::UInt => matches!(bits, 8 | 16 | 32 | 64),
            DataType::Float => matches!(bits, 16 | 32 | 64),
            DataType::BFloat => bits == 16,
            DataType::Bytes => bits > 0 && bits % 8 == 0 && bits <= i32::MAX as i64,
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
            DataType::Bytes => "any positive multiple of 8",
        }
    }
}

/// Checks an (operator, type, width) triple; `Err` says what is wrong.
/// The width comes back in bits.
pub(crate) fn check_local(op: i64, dt: i64, width: i64) -> Result<(Op, DataType, u32), String> {
    let Some(op) = Op::from_raw(op) else {
        return Err(format!(
            "operator {op} does not exist (GOAL_MAX..GOAL_WTIME are 0..10, user operations come from GOAL_Op_create)"
        ));
    };
    if op == ReduceOp::Wtime {
        // WTIME has no type checking: it always writes one 64-bit double.
        return Ok((op, DataType::Float, 64));
    }
    let Some(ty) = DataType::from_raw(dt) else {
        return Err(format!(
            "data type {dt} does not exist (GOAL_SINT, GOAL_UINT, GOAL_FLOAT, GOAL_BFLOAT, GOAL_BYTES are 0, 1, 2, 3, 4)"
        ));
    };
    if !ty.has_width(width) {
        return Err(format!("element width {width} bits does not exist for {} (it takes {})", ty.name(), ty.widths()));
    }
    if ty == DataType::Bytes && !matches!(op, Op::User(_) | Op::Builtin(ReduceOp::Copy)) {
        return Err(format!("{} is not defined on GOAL_BYTES (opaque elements take only user operations and GOAL_COPY)", op.name()));
    }
    if matches!(op, Op::Builtin(ReduceOp::And | ReduceOp::Or | ReduceOp::Xor)) && ty.is_float() {
        return Err(format!(
            "{} is not defined on {} of width {width} (bitwise operators take GOAL_SINT and GOAL_UINT)",
            op.name(),
            ty.name()
        ));
    }
    Ok((op, ty, width as u32))
}
