// A landing zone's existing spoke (existingIntegrationSubnetId, existingPrivateEndpointSubnetId), read, never written:
// the app integrates with one subnet and the private endpoints go into the other, instead of a network created here.
// Deployed into the spoke's resource group, it checks what would otherwise fail later with a less useful error, or not
// at all: the virtual network is in the app's region, the integration subnet is delegated to Microsoft.App/environments
// (Flex Consumption's delegation; an app team in a landing zone usually may not add it), and the private endpoints'
// subnet is delegated to nothing. Its NSG, route table and DNS are the landing zone's and stay as they are
// (docs/deployment.md, "An existing spoke").
@description('Resource id of the subnet the app integrates with.')
param integrationSubnetId string
@description('Resource id of the subnet the private endpoints go into, in the same virtual network.')
param privateEndpointSubnetId string
@description('The app\'s region: Flex Consumption integrates only with a virtual network in its own region.')
param location string

// /subscriptions/<s>/resourceGroups/<g>/providers/Microsoft.Network/virtualNetworks/<vnet>/subnets/<subnet>
var integrationParts = split(integrationSubnetId, '/')
var privateEndpointParts = split(privateEndpointSubnetId, '/')

resource vnet 'Microsoft.Network/virtualNetworks@2023-11-01' existing = {
  name: integrationParts[8]
}

resource integrationSubnet 'Microsoft.Network/virtualNetworks/subnets@2023-11-01' existing = {
  parent: vnet
  name: integrationParts[10]
}

resource privateEndpointSubnet 'Microsoft.Network/virtualNetworks/subnets@2023-11-01' existing = {
  parent: vnet
  name: privateEndpointParts[10]
}

var integrationDelegations = map(integrationSubnet.properties.?delegations ?? [], d => d.properties.serviceName)
var problems = filter([
  toLower(replace(vnet.location, ' ', '')) == toLower(replace(location, ' ', '')) ? '' : 'The virtual network of existingIntegrationSubnetId is in ${vnet.location}, the app in ${location}: Flex Consumption integrates only with a virtual network in its own region.'
  contains(integrationDelegations, 'Microsoft.App/environments') ? '' : 'existingIntegrationSubnetId must be delegated to Microsoft.App/environments (Flex Consumption); it is delegated to [${join(integrationDelegations, ', ')}]. Ask the landing zone team to delegate it.'
  empty(privateEndpointSubnet.properties.?delegations ?? []) ? '' : 'existingPrivateEndpointSubnetId is delegated to a service: private endpoints need a subnet delegated to nothing.'
], problem => !empty(problem))

// A check that fails fails this module's deployment (Bicep's fail()), which the app and every private endpoint wait
// for: nothing is put into a subnet that cannot take it.
output integrationSubnetId string = empty(problems) ? integrationSubnet.id : fail(join(problems, ' '))
output privateEndpointSubnetId string = empty(problems) ? privateEndpointSubnet.id : fail(join(problems, ' '))
output vnetId string = vnet.id
