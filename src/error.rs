//! The one error type of the engine. Each kind maps to the Python exception torch raises for the
//! same mistake (`python::to_py` in src/python/mod.rs); messages say what is wrong with shapes/dtypes spelled out.

use std::fmt;

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// torch's RuntimeError (shape mismatch, autograd misuse, dtype not supported, ...)
    Runtime,
    /// IndexError (dim or index out of range)
    Index,
    /// TypeError (wrong argument type)
    Type,
    /// ValueError
    Value,
    /// NotImplementedError
    NotImplemented,
}

#[derive(Debug)]
pub struct Error {
    pub kind: ErrorKind,
    pub msg: String,
    /// A foreign error (a Python exception raised in a callback) carried through the engine unchanged.
    pub payload: Option<Box<dyn std::any::Any + Send + Sync>>,
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub fn new(kind: ErrorKind, msg: impl Into<String>) -> Error {
        Error { kind, msg: msg.into(), payload: None }
    }
    pub fn runtime(msg: impl Into<String>) -> Error {
        Error::new(ErrorKind::Runtime, msg)
    }
    pub fn index(msg: impl Into<String>) -> Error {
        Error::new(ErrorKind::Index, msg)
    }
    pub fn type_(msg: impl Into<String>) -> Error {
        Error::new(ErrorKind::Type, msg)
    }
    pub fn value(msg: impl Into<String>) -> Error {
        Error::new(ErrorKind::Value, msg)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.msg)
    }
}

impl std::error::Error for Error {}

/// `bail!(Runtime, "...", args)` returns an error of that kind.
#[macro_export]
macro_rules! bail {
    ($kind:ident, $($arg:tt)*) => {
        return Err($crate::error::Error::new($crate::error::ErrorKind::$kind, format!($($arg)*)))
    };
}
