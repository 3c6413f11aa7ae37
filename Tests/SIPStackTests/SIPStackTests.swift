import SIPStack
import Testing
